// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {FCFSAuction} from "./FCFSAuction.sol";

/// @title Dutch auction: FCFS whose price falls linearly from `rate` to `finalRate` over the running time.
/// @notice price = rate - (rate - finalRate) * elapsed / duration, where `elapsed` counts running seconds only,
///         so the price stands still while the auction is paused. Each buyer pays the price of their block.
contract DutchAuction is FCFSAuction {
    uint256 public finalRate;

    function _initializeType(AuctionParams calldata params) internal virtual override {
        super._initializeType(params);
        if (params.finalRate == 0 || params.finalRate >= params.rate) revert InvalidParams("finalRate");
        finalRate = params.finalRate;
    }

    function _priceNow() internal view override returns (uint256) {
        if (startTime == 0) return rate;
        uint256 elapsed = duration - _remainingActive();
        // Rounding the decrease down rounds the price up, in the project's favour.
        return rate - Math.mulDiv(rate - finalRate, elapsed, duration);
    }

    /// @dev The Dutch form of `BidSubmission` (also the strict type's): the price of the bid's block.
    function _announceBid(address bidder, uint256 amount, uint256 price) internal override {
        emit BidSubmission(bidder, amount, price);
    }
}
