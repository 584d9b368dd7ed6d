// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {Heap} from "@openzeppelin/contracts/utils/structs/Heap.sol";
import {CappedAuction} from "./CappedAuction.sol";

/// @title Order-book Dutch auction with one uniform clearing price.
/// @notice Each address places one order: a price (at least `minPrice`) and bid coin, which buys
///         floor(amount * 10**decimals / price) tokens and is held by the auction. Orders fill from the highest
///         price down; the clearing price is the price of the lowest order that receives tokens, and every
///         filled order pays it. Orders at the clearing price fill in the order they were placed (the last one
///         partly). After the end `withDraw()` hands out tokens and refunds the rest of the deposit.
/// @dev Price levels sit in a min-heap. A level is dropped as soon as the demand above it covers the whole
///      supply: it can never receive tokens again, and `minPrice` rises past it. Each level is dropped once,
///      so a bid costs O(log levels) amortized and the end needs no loop over bidders.
contract OBDutchAuction is CappedAuction {
    using Heap for Heap.Uint256Heap;

    struct Order {
        uint256 price;
        uint256 tokens;
        uint256 deposit;
        /// @dev Tokens wanted by earlier orders at the same price: the queue position at that level.
        uint256 queuedBefore;
        bool claimed;
    }

    event OrderPlaced(address indexed bidder, uint256 price, uint256 tokenAmount, uint256 deposit);

    error PriceTooLow(uint256 price, uint256 minPrice);
    error AlreadyBid(address bidder);

    mapping(address bidder => Order) public orders;
    /// @notice Tokens wanted at each price level (kept for dropped levels too).
    mapping(uint256 price => uint256) public demandAt;
    /// @notice Tokens wanted at levels still in the running.
    uint256 public activeDemand;
    /// @notice Lowest price a new order may name: the reserve, or just above the current clearing price once
    ///         demand covers the supply (an order at that price would queue behind earlier ones and get nothing).
    uint256 public minPrice;
    uint256 public currentRate;
    /// @notice Set at the end: the uniform price every filled order pays.
    uint256 public clearingPrice;
    /// @notice Set at the end: tokens shared, in bid order, by the orders at the clearing price.
    uint256 public marginalAllocation;

    Heap.Uint256Heap private _levels;

    /// @notice Where the proceeds go at the end: the first implementation's name for `projectWallet` in this type
    ///         (its `projectWallet` was the auction itself), kept because its web client multicalls this getter.
    function proposerWallet() external view returns (address) {
        return projectWallet;
    }

    function getCurrentRate() public view override returns (uint256) {
        if (status == AuctionStatus.Ended) return clearingPrice;
        return _levels.length() == 0 ? 0 : _levels.peek();
    }

    /// @notice Order with an explicit price; `bid(amount)` bids at `minPrice`.
    function bid(uint256 amount, uint256 price) external nonReentrant {
        _beginBid(amount);
        _placeOrder(msg.sender, amount, price);
    }

    /// @dev `finalRate` is the reserve price (0 means 1 unit); `rate` is not used by this type.
    function _initializeType(AuctionParams calldata params) internal override {
        minPrice = params.finalRate == 0 ? 1 : params.finalRate;
    }

    function _placeBid(address bidder, uint256 amount) internal override {
        _placeOrder(bidder, amount, minPrice);
    }

    function _placeOrder(address bidder, uint256 amount, uint256 price) private {
        if (price < minPrice) revert PriceTooLow(price, minPrice);
        if (orders[bidder].deposit != 0) revert AlreadyBid(bidder);
        uint256 tokens = _tokensFor(amount, price);
        if (tokens == 0) revert BidTooSmall(amount);
        uint256 deposit = _costOf(tokens, price);
        _record(bidder, deposit);

        uint256 queued = demandAt[price];
        orders[bidder] = Order(price, tokens, deposit, queued, false);
        if (queued == 0) _levels.insert(price);
        demandAt[price] = queued + tokens;
        activeDemand += tokens;

        _collect(bidder, deposit, address(this), price);
        emit OrderPlaced(bidder, price, tokens, deposit);
        _reprice();
    }

    /// @dev The Dutch form of `BidSubmission`: the deposit held at the order's price (`OrderPlaced` follows).
    function _announceBid(address bidder, uint256 amount, uint256 price) internal override {
        emit BidSubmission(bidder, amount, price);
    }

    function _reprice() private {
        uint256 supply = initialSupply;
        uint256 lowest = _levels.peek();
        // The last level can never be dropped: demand above it is zero and the supply is positive.
        while (activeDemand - demandAt[lowest] >= supply) {
            _levels.pop();
            activeDemand -= demandAt[lowest];
            lowest = _levels.peek();
        }
        if (activeDemand >= supply && lowest + 1 > minPrice) {
            minPrice = lowest + 1;
            emit VariableChange("minPrice", minPrice);
        }
        if (lowest != currentRate) {
            currentRate = lowest;
            emit VariableChange("currentRate", lowest);
        }
        uint256 sold = Math.min(activeDemand, supply);
        if (sold != soldProjectTokens) {
            soldProjectTokens = sold;
            emit VariableChange("soldProjectTokens", sold);
        }
    }

    function _finalize() internal override returns (uint256 finalPrice) {
        if (_levels.length() == 0) {
            _disposeUnsold(initialSupply);
            return 0;
        }
        uint256 price = _levels.peek();
        uint256 supply = initialSupply;
        uint256 atPrice = demandAt[price];
        clearingPrice = price;
        marginalAllocation = activeDemand > supply ? supply - (activeDemand - atPrice) : atPrice;
        // Bidders pay ceil(tokens * price) each while the project takes the floor of the total, so the
        // auction can always pay every refund; at most one unit per bidder stays behind as dust.
        _sendBidCoin(projectWallet, Math.mulDiv(soldProjectTokens, price, _unit));
        _disposeUnsold(supply - soldProjectTokens);
        return price;
    }

    function _claim(address bidder) internal override {
        Order storage order = orders[bidder];
        if (order.deposit == 0 || order.claimed) revert NothingToClaim(bidder);
        order.claimed = true;
        uint256 price = clearingPrice;
        uint256 tokens;
        if (order.price > price) {
            tokens = order.tokens;
        } else if (order.price == price && order.queuedBefore < marginalAllocation) {
            tokens = Math.min(order.tokens, marginalAllocation - order.queuedBefore);
        }
        uint256 refund = order.deposit - _costOf(tokens, price);
        _sendTokens(bidder, tokens);
        _sendBidCoin(bidder, refund);
        _announceClaim(bidder, tokens, refund);
    }
}
