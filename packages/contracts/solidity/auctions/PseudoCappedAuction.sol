// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {CappedAuction} from "./CappedAuction.sol";

/// @title Pseudo-capped auction: a fixed supply shared pro rata among all bid coin deposited.
/// @notice Bids go to the project wallet at once and are booked per bidder. After the end each bidder claims
///         supply * deposit / totalDeposited tokens (the last claimer also gets the rounding remainder), so the
///         whole supply is sold at price totalDeposited / supply. Nobody bid: the supply is burned.
contract PseudoCappedAuction is CappedAuction {
    /// @notice Implied price so far: totalDeposited per whole token.
    uint256 public currentRate;
    uint256 public claimedDeposits;
    uint256 public claimedTokens;
    mapping(address bidder => bool) public claimed;

    function getCurrentRate() public view override returns (uint256) {
        return Math.mulDiv(totalDepositedSucoins, _unit, initialSupply);
    }

    function _initializeType(AuctionParams calldata) internal override {}

    function _placeBid(address bidder, uint256 amount) internal override {
        _record(bidder, amount);
        _collect(bidder, amount, projectWallet, 0);
        currentRate = getCurrentRate();
        emit VariableChange("currentRate", currentRate);
    }

    function _finalize() internal override returns (uint256 finalPrice) {
        if (totalDepositedSucoins == 0) {
            _disposeUnsold(initialSupply);
            return 0;
        }
        soldProjectTokens = initialSupply;
        emit VariableChange("soldProjectTokens", initialSupply);
        return currentRate;
    }

    function _claim(address bidder) internal override {
        uint256 deposit = biddingBook[bidder];
        if (deposit == 0 || claimed[bidder]) revert NothingToClaim(bidder);
        claimed[bidder] = true;
        uint256 tokens = claimedDeposits + deposit == totalDepositedSucoins
            ? initialSupply - claimedTokens
            : Math.mulDiv(deposit, initialSupply, totalDepositedSucoins);
        claimedDeposits += deposit;
        claimedTokens += tokens;
        _sendTokens(bidder, tokens);
        _announceClaim(bidder, tokens, 0);
    }

    function _disposeUnsold(uint256 amount) internal override {
        if (amount > 0) projectToken.burn(amount);
    }
}
